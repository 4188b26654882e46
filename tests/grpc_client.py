"""An independent gRPC client (grpcio, stubs generated here) against a running coordinator.

Usage: grpc_client.py ADDR TOKEN [CA_PEM]. The coordinator must run with --max-plies 2 and that
token; with CA_PEM it must serve TLS with a certificate that CA signed, and the client first checks
that a plaintext channel gets nothing from it.
Checks that an illegal move is INVALID_ARGUMENT and stores nothing, that a wrong token is
UNAUTHENTICATED, and that a valid two-move game (a max_length draw) is accepted and counted; then
the hostile requests: root values out of range (INVALID_ARGUMENT), a message that would swell
when decoded (RESOURCE_EXHAUSTED, refused before decoding) and an idempotency key reused with other
games (ALREADY_EXISTS), none of which stores anything.
"""

import importlib
import os
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(ROOT, "proto")


def load_stubs(out):
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main([
        "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{include}", f"--python_out={out}",
        f"--grpc_python_out={out}", os.path.join(PROTO_ROOT, "xqz/v1/coordinator.proto"),
    ])
    assert rc == 0, f"protoc failed: {rc}"
    sys.path.insert(0, out)
    return (importlib.import_module("xqz.v1.coordinator_pb2"), importlib.import_module("xqz.v1.coordinator_pb2_grpc"))


def move_code(text):
    """`h2e2` -> from | to << 7, a square being rank * 9 + file."""
    def square(s):
        return int(s[1]) * 9 + (ord(s[0]) - ord("a"))
    return square(text[:2]) | square(text[2:]) << 7


def game(pb, game_id, moves, others):
    plies = [
        pb.PlySearch(policy_moves=[move_code(m), move_code(o)], policy_probs=[0.625, 0.375],
                     root_wdl=[0.25, 0.5, 0.25], full_search=True)
        for m, o in zip(moves, others)
    ]
    return pb.GameSubmission(
        game_id=game_id, start_fen="rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1",
        moves=[move_code(m) for m in moves], result="draw", reason="max_length", model_version=0, seed=1,
        plies=plies)


def main():
    addr, token = sys.argv[1], sys.argv[2]
    ca = sys.argv[3] if len(sys.argv) > 3 else None
    with tempfile.TemporaryDirectory() as out:
        pb, rpc = load_stubs(out)
        auth = [("authorization", f"Bearer {token}")]
        if ca is None:
            channel = grpc.insecure_channel(addr)
        else:
            with grpc.insecure_channel(addr) as plain:
                try:
                    rpc.CoordinatorStub(plain).GetStats(pb.GetStatsRequest(), metadata=auth, timeout=5)
                    raise AssertionError("a TLS coordinator answered a plaintext channel")
                except grpc.RpcError as err:
                    assert err.code() == grpc.StatusCode.UNAVAILABLE, err
            with open(ca, "rb") as f:
                channel = grpc.secure_channel(addr, grpc.ssl_channel_credentials(root_certificates=f.read()))
        with channel:
            stub = rpc.CoordinatorStub(channel)
            before = stub.GetStats(pb.GetStatsRequest(), metadata=auth, timeout=10)

            try:
                stub.GetStats(pb.GetStatsRequest(), metadata=[("authorization", "Bearer nope")], timeout=10)
                raise AssertionError("a wrong token was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err

            # Worker ids are the coordinator's: one it did not issue is refused, as a stranger.
            try:
                stub.Heartbeat(pb.HeartbeatRequest(worker_id="py"), metadata=auth, timeout=10)
                raise AssertionError("a worker id the coordinator did not issue was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED, err
                assert "unknown worker id" in err.details(), err.details()
            worker = stub.Register(pb.RegisterRequest(name="py"), metadata=auth, timeout=10).worker_id
            assert worker.startswith("py-"), worker

            good = game(pb, bytes(range(16)), ["h2e2", "h9g7"], ["b2e2", "b9c7"])
            bad = game(pb, bytes(range(1, 17)), ["h2e2", "h2e2"], ["b2e2", "b9c7"])  # Red moves twice
            request = pb.SubmitGamesRequest(idempotency_key="py-bad", worker_id=worker, games=[good, bad])
            try:
                stub.SubmitGames(request, metadata=auth, timeout=10)
                raise AssertionError("an illegal move was accepted")
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
                assert "illegal move" in err.details() and "game #1" in err.details(), err.details()
            stats = stub.GetStats(pb.GetStatsRequest(), metadata=auth, timeout=10)
            assert stats.games == before.games, (stats.games, before.games)
            assert stats.rejected_batches == before.rejected_batches + 1, stats

            request = pb.SubmitGamesRequest(idempotency_key="py-good", worker_id=worker, games=[good])
            answer = stub.SubmitGames(request, metadata=auth, timeout=10)
            assert (answer.accepted, answer.duplicates, answer.replayed_batch) == (1, 0, False), answer
            stats = stub.GetStats(pb.GetStatsRequest(), metadata=auth, timeout=10)
            assert stats.games == before.games + 1 and stats.samples == before.samples + 2, stats

            def refused(request, code, words):
                try:
                    stub.SubmitGames(request, metadata=auth, timeout=10)
                    raise AssertionError(f"{request.idempotency_key} was accepted")
                except grpc.RpcError as err:
                    assert err.code() == code, (request.idempotency_key, err)
                    assert all(w in err.details() for w in words), err.details()

            skewed = game(pb, bytes(range(2, 18)), ["h2e2", "h9g7"], ["b2e2", "b9c7"])
            skewed.plies[1].root_wdl[:] = [-5.0, 7.0, -1.0]
            refused(pb.SubmitGamesRequest(idempotency_key="py-wdl", worker_id=worker, games=[skewed]),
                    grpc.StatusCode.INVALID_ARGUMENT, ["root_wdl", "game #0"])
            swollen = game(pb, bytes(range(3, 19)), ["h2e2", "h9g7"], ["b2e2", "b9c7"])
            swollen.plies.extend(pb.PlySearch() for _ in range(100_000))
            refused(pb.SubmitGamesRequest(idempotency_key="py-swell", worker_id=worker, games=[swollen]),
                    grpc.StatusCode.RESOURCE_EXHAUSTED, ["100002 plies", "decoded"])
            other = game(pb, bytes(range(4, 20)), ["h2e2", "h9g7"], ["b2e2", "b9c7"])
            refused(pb.SubmitGamesRequest(idempotency_key="py-good", worker_id=worker, games=[other]),
                    grpc.StatusCode.ALREADY_EXISTS, ["py-good"])
            stats = stub.GetStats(pb.GetStatsRequest(), metadata=auth, timeout=10)
            assert stats.games == before.games + 1, stats
            matches(pb, stub, auth, worker)
            leases(pb, stub, auth, worker)
    print("ok")


def matches(pb, stub, auth, worker):
    """A match of one pair from the start position, capped at two plies: submitted, taken, handed in."""
    spec = pb.MatchSpec(a=pb.MatchPlayer(builtin="material", playouts=8),
                        b=pb.MatchPlayer(builtin="uniform", playouts=8), pairs=1, random_plies=0, max_plies=2)
    try:
        stub.SubmitMatch(pb.SubmitMatchRequest(spec=pb.MatchSpec(a=spec.a, pairs=1)), metadata=auth, timeout=10)
        raise AssertionError("a match without its second player was accepted")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "player b" in err.details(), err
    try:
        stub.SubmitMatch(pb.SubmitMatchRequest(spec=pb.MatchSpec(a=spec.a, b=spec.b, pairs=1, ruleset="house")),
                         metadata=auth, timeout=10)
        raise AssertionError("an unknown ruleset was accepted")
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "house" in err.details(), err
    # Absent fields take the defaults of `xqz eval submit`: chinese2011 here (no rung plays).
    job = stub.SubmitMatch(pb.SubmitMatchRequest(spec=spec), metadata=auth, timeout=10)
    assert job.spec.ruleset == "chinese2011", job.spec
    assert (job.a_name, job.b_name, job.state) == ("material@8", "uniform@8", pb.MATCH_STATE_RUNNING), job
    taken = stub.TakePair(pb.TakePairRequest(worker_id=worker), metadata=auth, timeout=10)
    assert taken.HasField("pair") and (taken.pair.match_id, taken.pair.pair) == (job.id, 0), taken
    assert not stub.TakePair(pb.TakePairRequest(worker_id=worker), metadata=auth, timeout=10).HasField("pair")

    def pair(result):
        played = pb.PlayedGame(moves=[move_code("h2e2"), move_code("h9g7")], result=result)
        return pb.SubmitPairRequest(worker_id=worker, match_id=job.id, pair=0, games=[played, played])

    for request, code, words in [
        (pair("red"), grpc.StatusCode.INVALID_ARGUMENT, ["result is draw"]),
        (pb.SubmitPairRequest(worker_id=worker, match_id=job.id, games=[pb.PlayedGame()] * 100_000),
         grpc.StatusCode.RESOURCE_EXHAUSTED, ["100000 games", "decoded"]),
    ]:
        try:
            stub.SubmitPair(request, metadata=auth, timeout=10)
            raise AssertionError(f"{words} was accepted")
        except grpc.RpcError as err:
            assert err.code() == code and all(w in err.details() for w in words), err
    answer = stub.SubmitPair(pair("draw"), metadata=auth, timeout=10)
    assert answer.counted and answer.job.state == pb.MATCH_STATE_FINISHED, answer
    assert (answer.job.draws, list(answer.job.pentanomial)) == (2, [0, 0, 1, 0, 0]), answer
    assert not stub.SubmitPair(pair("draw"), metadata=auth, timeout=10).counted
    jobs = stub.ListMatches(pb.ListMatchesRequest(), metadata=auth, timeout=10).jobs
    assert [j.id for j in jobs] == [job.id] and jobs[0].draws == 2, jobs


def leases(pb, stub, auth, worker):
    """A pair counts only from the worker it was handed to, while its lease holds. The coordinator
    runs with --alive-seconds 2: a worker silent for longer loses its pairs to whoever asks next."""
    spec = pb.MatchSpec(a=pb.MatchPlayer(builtin="material", playouts=8),
                        b=pb.MatchPlayer(builtin="uniform", playouts=8), pairs=2, random_plies=0, max_plies=2)
    job = stub.SubmitMatch(pb.SubmitMatchRequest(spec=spec), metadata=auth, timeout=10)
    other = stub.Register(pb.RegisterRequest(name="py2"), metadata=auth, timeout=10).worker_id
    played = pb.PlayedGame(moves=[move_code("h2e2"), move_code("h9g7")], result="draw")

    def submit(who, pair):
        request = pb.SubmitPairRequest(worker_id=who, match_id=job.id, pair=pair, games=[played, played])
        return stub.SubmitPair(request, metadata=auth, timeout=10)

    def refused(who, pair, words):
        try:
            submit(who, pair)
            raise AssertionError(f"pair {pair} from {who} was counted")
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
            assert all(w in err.details() for w in words), err.details()
        listed = [j for j in stub.ListMatches(pb.ListMatchesRequest(), metadata=auth, timeout=10).jobs
                  if j.id == job.id]
        assert listed[0].draws == 0 and list(listed[0].pentanomial) == [0] * 5, listed

    refused(worker, 1, ["pair 1", "never handed out"])
    taken = stub.TakePair(pb.TakePairRequest(worker_id=worker), metadata=auth, timeout=10)
    assert (taken.pair.match_id, taken.pair.pair) == (job.id, 0), taken
    refused(other, 0, ["pair 0", "leased to another worker"])
    # The holder falls silent: its lease passes to the next worker that asks, and ends for it.
    time.sleep(2.5)
    taken = stub.TakePair(pb.TakePairRequest(worker_id=other), metadata=auth, timeout=10)
    assert (taken.pair.match_id, taken.pair.pair) == (job.id, 0), taken
    refused(worker, 0, ["pair 0", "leased to another worker"])
    answer = submit(other, 0)
    assert answer.counted and answer.job.draws == 2 and answer.job.pairs_in_flight == 0, answer


if __name__ == "__main__":
    main()
