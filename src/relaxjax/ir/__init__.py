"""relaxjax.ir"""
