"""A herald producer in Python with psycopg 3: enqueue, batch, status, history, a scheduled
reminder withdrawn by its key, and a validation error handled by its code and field.

    DATABASE_URL=postgres://… python3 examples/python/producer.py

herald's input errors are SQLSTATE class 22, which psycopg raises as
psycopg.DataError; e.diag.sqlstate is the code (docs/sql.md, "Errors") and
e.diag.column_name the field.
"""

import json
import os
import sys

import psycopg
from psycopg.types.json import Jsonb


def main() -> int:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        # One message; a repeat of the idempotency key returns the first id.
        payload = Jsonb({"subject": "Your order", "text": "It ships today."})
        sql = "SELECT herald.enqueue('email', %s, %s, idempotency_key => %s)"
        (first,) = conn.execute(sql, ("ana@example.com", payload, "order-42")).fetchone()
        (again,) = conn.execute(sql, ("ana@example.com", payload, "order-42")).fetchone()
        assert again == first, (first, again)
        # The key names that notification: another one under it is refused, named.
        try:
            conn.execute(sql, ("bo@example.com", payload, "order-42"))
            raise AssertionError("a key reused for another recipient was taken")
        except psycopg.Error as e:
            assert (e.sqlstate, e.diag.column_name) == ("22V20", "idempotency_key"), e

        # A batch: all or nothing, ids in input order. recipient_zone is the person's time
        # zone: a channel with quiet_per_recipient keeps its quiet hours in it.
        batch = [
            {"channel": "sms", "recipient": "+14155550100", "payload": {"text": "Code 123456"},
             "recipient_zone": "America/Los_Angeles"},
            {"channel": "email", "recipient": "bo@example.com", "payload": {"subject": "Hi", "text": "Hello"}},
        ]
        (ids,) = conn.execute("SELECT herald.enqueue_batch(%s)", (Jsonb(batch),)).fetchone()
        assert len(ids) == 2, ids

        # What happened to it (a producer sees only its own messages).
        status, attempts = conn.execute(
            "SELECT status, attempts FROM herald.status(%s)", (first,)).fetchone()
        print(f"message {first}: {status}, {attempts} attempts; batch {ids}")

        # Its history, event by event: accepted, each failed attempt's class and code,
        # the end it came to, the providers' reports (docs/sql.md, "herald.history").
        events = [e for (e,) in conn.execute(
            "SELECT event FROM herald.history(idempotency_key => 'order-42')").fetchall()]
        assert events == ["accepted"], events

        # A reminder for tomorrow, withdrawn by its key when the appointment is called off.
        conn.execute("SELECT herald.enqueue('sms', '+14155550100', %s, run_at => now() + interval '1 day',"
                     " idempotency_key => 'reminder-7')", (Jsonb({"text": "See you at 10"}),))
        (cancelled,) = conn.execute("SELECT herald.cancel(idempotency_key => 'reminder-7')").fetchone()
        assert cancelled == "cancelled", cancelled
        print(f"reminder-7: {cancelled}")

        # Bad input: a DataError naming the field, and nothing stored.
        for sql, args, code, field in [
            ("SELECT herald.enqueue('email', %s, %s)", ("not-an-address", payload), "22V02", "recipient"),
            ("SELECT herald.enqueue_batch(%s)",
             (Jsonb(batch + [{"channel": "sms", "recipient": "12", "payload": {"text": "x"}}]),),
             "22V02", "messages[2].recipient"),
            # an abbreviation is not a zone: 'PST' says nothing of summer time
            ("SELECT herald.enqueue('sms', '+14155550100', %s, recipient_zone => 'PST')",
             (Jsonb({"text": "x"}),), "22V19", "recipient_zone"),
        ]:
            try:
                conn.execute(sql, args)
            except psycopg.DataError as e:
                assert (e.diag.sqlstate, e.diag.column_name) == (code, field), (e.diag.sqlstate, e.diag.column_name)
                print(f"refused: {e.diag.sqlstate} {e.diag.column_name}: {e.diag.message_primary}")
            else:
                print("bad input was accepted", file=sys.stderr)
                return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
