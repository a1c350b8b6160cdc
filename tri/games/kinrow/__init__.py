"""k-in-a-row games: rules (configs), the shared engine, Connect Four and m,n,k-games."""
