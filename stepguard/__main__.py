"""``python -m stepguard``: the command line."""

from stepguard.cli import main

main()
