"""Reading logs (SPEC §2-§3): framing, one line alone, what spans lines, the one streaming chain reader.

Dialects plug in through ``read/dialect.py``; this package never imports one
(``ract_cli.dialects`` registers the Raxol journal).
"""
