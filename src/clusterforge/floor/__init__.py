"""The floor page (issue #37): the declared cluster drawn as rows, racks, rails and cables, coloured by live state."""
