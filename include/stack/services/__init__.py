"""One module per backing service; ``ordered_services`` gives the start order."""
