"""A user's test in a scratch project (ci/test-packages.sh python): the pytest plugin of the
installed slotlane package starts a 4-shard slotlane-server in the test process."""
import slotlane


def test_cluster_from_the_fixture(slotlane_cluster_url, slotlane_server):
    assert len(slotlane_server.ports) == 4
    with slotlane.Client(slotlane_cluster_url) as r:
        for i in range(64):
            r.set("pkg:py:%d" % i, i)
        assert [r.get("pkg:py:%d" % i) for i in range(64)] == [str(i).encode() for i in range(64)]
        assert len(r.nodes()) == 4
    print("\npython-testing ok: 64 keys over %d shards at %s" % (len(slotlane_server.ports), slotlane_cluster_url))
