"""The command line: parsing, rendering, exit codes. Thin."""
