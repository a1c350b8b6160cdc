from tri.cli import main

main()
