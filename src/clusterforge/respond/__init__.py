"""Level 3's response on the monitoring node (level3.py): standard library only, embedded in the drain hook."""
