"""`python -m sessionstore.cli`: the same as the `sessionstore` command."""

from . import main

main()
