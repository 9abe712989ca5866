from stepguard.cli import main

main()
