"""One module per command (`cli/<command>.py`): its options, its output (rich tables, --format json) and its exit
codes; what a command does lives in the capability folder it calls."""
