"""Answer rendering: Markdown laid out as it streams, with tables, code colouring and formulas."""
