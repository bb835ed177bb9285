SELECT array_agg(id) AS ids, array_agg(lease_token) AS toks FROM herald.claim_batch('bench', 1000) \gset
SELECT bench.complete_delete(':ids'::bigint[], ':toks'::bigint[]);
