"""What to run on which host (the tool list per node, SSH targets) and the raw outputs it brings back, live over
SSH or saved in a capture directory (`--from DIR`): text in, never parsed here."""
