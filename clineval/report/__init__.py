"""clineval.report"""
