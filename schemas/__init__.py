"""The JSON Schemas of every file the advisor reads or writes; shipped inside the package as advisor.schemas."""
