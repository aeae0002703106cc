"""``raiz demo``: a whole match between four bots, played through the real API."""
