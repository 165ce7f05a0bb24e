"""claudeloop.application"""
