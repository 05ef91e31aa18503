"""Front end: a Runner API pipeline -> checked, fused stages. Shared by every backend."""
