"""The table console: a dealer monitor and a pit-boss page served by the daemon (docs/console.md)."""
