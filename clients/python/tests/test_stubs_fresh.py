"""The committed protobuf/gRPC stubs are what gen_stubs.py makes from proto/ now."""
import importlib.util
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
GEN = HERE.parent / "gen_stubs.py"


def test_committed_stubs_are_fresh(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_stubs", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for p in mod.generate(tmp_path):
        committed = mod.OUT / p.name
        assert committed.read_text() == p.read_text(), \
            f"{committed} is stale: run python3 {GEN}"
