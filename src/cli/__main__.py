"""`python -m paperscope.cli`: the `paperscope` command."""

from . import main

main()
