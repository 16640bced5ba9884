"""relaxjax.passes"""
