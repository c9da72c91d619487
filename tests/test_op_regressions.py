

def test_more_values_found_by_the_full_op_db_sweep():
    assert ember.sign(_t([math.nan, -2.0, 0.0])).tolist() == [0.0, -1.0, 0.0]     # PyTorch: sign(NaN) = 0
    r = ember.hypot(_t([math.inf, math.nan, 3.0]), _t([math.nan, math.inf, 4.0]))
    assert r.tolist() == [math.inf, math.inf, 5.0]
    parts = ember.tensor_split(ember.arange(5), _t(2))
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4]]
    assert F.alpha_dropout(ember.ones(3), 1.0, True).tolist() == [0.0, 0.0, 0.0]
    assert float(F.hinge_embedding_loss(_t([math.inf, -math.inf]), _t([1.0, -1.0]), reduction="sum")) == math.inf
    # a repeated index copies one slice (the last, NumPy's order), never the sum of both
    r = ember.index_copy(ember.zeros(2, 3), 1, _t([0, 0]), _t([[1.0, 2.0], [3.0, 4.0]]))
    assert r.tolist() == [[2.0, 0.0, 0.0], [4.0, 0.0, 0.0]]
