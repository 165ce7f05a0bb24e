"""claudeloop.adapters"""
