"""The lab as a rehearsal of an inventory: which hosts and fabric it runs, its services, and faults by inventory
names."""
