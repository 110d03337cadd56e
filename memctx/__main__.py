from memctx.cli import main

main()
