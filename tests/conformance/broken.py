"""The reference runner with one rule of the contract broken, to prove the
conformance suite catches it: python3 broken.py no-extend | ignore-tokens | drop-unsent |
bare-ids | no-doubt."""

import importlib.util, os, sys

path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "runner.py")
spec = importlib.util.spec_from_file_location("runner", path)
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)

mode = sys.argv[1]
if mode == "no-extend":  # slow sends lose their lease
    runner.Runner.extend_leases = lambda self: None
elif mode == "ignore-tokens":  # reports carry a token of its own choosing
    report = runner.Runner.report
    runner.Runner.report = lambda self, m, receipt, f: report(self, dict(m, lease_token=0), receipt, f)
elif mode == "drop-unsent":  # SIGTERM: exit at once, reporting nothing
    runner.Runner.run_forever = runner.Runner.run

    def run(self):
        import signal
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        self.run_forever()
    runner.Runner.run = run
elif mode == "bare-ids":  # webhook-ids without the installation's tag: another herald's too
    runner.webhook_id = lambda message_id, key: f"msg_{message_id}"
elif mode == "no-doubt":  # a send that may have been taken reported as one that never left
    send = runner.send

    def send_without_doubt(m, id_key):
        try:
            return send(m, id_key)
        except runner.Failure as f:
            if f.code == "in_doubt":
                f.code = None
            raise
    runner.send = send_without_doubt
else:
    sys.exit("usage: broken.py no-extend|ignore-tokens|drop-unsent|bare-ids|no-doubt")
sys.exit(runner.main())
