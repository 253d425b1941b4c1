"""sandlot: isolated sandboxes behind one interface."""
