"""claudeloop.rehearsal"""
