"""`lower-to-tpu`: tiling of `hlo` ops and collective algorithms as DMA programs (to come)."""
