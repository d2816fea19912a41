"""Monitoring beyond rendering: the alerts command's view and the drain hook's receiver."""
