// A herald producer in Node with node-postgres (pg): enqueue, batch, status, history,
// a scheduled reminder withdrawn by its key, and a validation error handled by its
// code and field.
//
//   npm ci --prefix examples/node && DATABASE_URL=postgres://… node examples/node/producer.js
//
// herald's input errors are SQLSTATE class 22 (docs/sql.md, "Errors"); pg gives the
// code as err.code and the field as err.column.
'use strict';
const assert = require('node:assert');
const { Client } = require('pg');

async function main() {
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    // One message; a repeat of the idempotency key returns the first id.
    const payload = { subject: 'Your order', text: 'It ships today.' };
    const enqueue = "SELECT herald.enqueue('email', $1, $2, idempotency_key => $3) AS id";
    const first = (await client.query(enqueue, ['ana@example.com', payload, 'order-42'])).rows[0].id;
    const again = (await client.query(enqueue, ['ana@example.com', payload, 'order-42'])).rows[0].id;
    assert.strictEqual(again, first);
    // The key names that notification: another one under it is refused, named.
    await assert.rejects(client.query(enqueue, ['bo@example.com', payload, 'order-42']),
      (e) => e.code === '22V20' && e.column === 'idempotency_key');

    // A batch: all or nothing, ids in input order.
    const batch = [
      { channel: 'sms', recipient: '+14155550100', payload: { text: 'Code 123456' } },
      { channel: 'email', recipient: 'bo@example.com', payload: { subject: 'Hi', text: 'Hello' } },
    ];
    const ids = (await client.query('SELECT herald.enqueue_batch($1) AS ids', [JSON.stringify(batch)])).rows[0].ids;
    assert.strictEqual(ids.length, 2);

    // What happened to it (a producer sees only its own messages).
    const s = (await client.query('SELECT status, attempts FROM herald.status($1)', [first])).rows[0];
    console.log(`message ${first}: ${s.status}, ${s.attempts} attempts; batch ${ids}`);

    // Its history, event by event: accepted, each failed attempt's class and code, the
    // end it came to, the providers' reports (docs/sql.md, "herald.history").
    const events = (await client.query('SELECT event FROM herald.history($1)', [first])).rows.map((r) => r.event);
    assert.deepStrictEqual(events, ['accepted']);

    // A reminder for tomorrow, withdrawn by its key when the appointment is called off.
    await client.query("SELECT herald.enqueue('sms', '+14155550100', $1, run_at => now() + interval '1 day', "
      + "idempotency_key => 'reminder-7')", [{ text: 'See you at 10' }]);
    const cancelled = (await client.query("SELECT herald.cancel(idempotency_key => 'reminder-7') AS s")).rows[0].s;
    assert.strictEqual(cancelled, 'cancelled');
    console.log(`reminder-7: ${cancelled}`);

    // Bad input: an error with the code and the field, and nothing stored.
    const cases = [
      ["SELECT herald.enqueue('email', $1, $2)", ['not-an-address', payload], '22V02', 'recipient'],
      ['SELECT herald.enqueue_batch($1)',
        [JSON.stringify([...batch, { channel: 'sms', recipient: '12', payload: { text: 'x' } }])],
        '22V02', 'messages[2].recipient'],
    ];
    for (const [sql, args, code, field] of cases) {
      try {
        await client.query(sql, args);
        throw new Error('bad input was accepted');
      } catch (err) {
        if (err.code === undefined) throw err;
        assert.deepStrictEqual([err.code, err.column], [code, field]);
        console.log(`refused: ${err.code} ${err.column}: ${err.message}`);
      }
    }
  } finally {
    await client.end();
  }
  console.log('ok');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
