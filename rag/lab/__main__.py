from rag.lab.cli import main

raise SystemExit(main())
