"""`tri play`: games in the terminal."""
