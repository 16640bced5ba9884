"""relaxjax.arith"""
