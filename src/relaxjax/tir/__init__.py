"""relaxjax.tir"""
