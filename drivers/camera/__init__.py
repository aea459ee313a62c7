"""The camera over the table: video sources, zones, recognition (barcodes and visual rank/suit),
tracking, and synthetic card images for tests and the virtual camera."""
