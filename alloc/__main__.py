"""`python -m alloc ...`: the same as the `alloc` command."""

from alloc.cli.app import main

main()
