try:
    from flash_attn import flash_attn_func  # expect-guarded: DT201
    HAS_FLASH = True
except (ImportError, ModuleNotFoundError):
    HAS_FLASH = False
