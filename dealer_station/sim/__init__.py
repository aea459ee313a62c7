"""The simulated-hardware harness: the real daemon against simulated devices, a simulated dealer
and a simulated betting system."""
