"""The pure rules of claudeloop: frozen values, closed unions, no I/O, no clock reads."""
