"""The command-line layer: parses, calls one library function, renders."""
