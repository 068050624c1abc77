"""clineval.judge"""
