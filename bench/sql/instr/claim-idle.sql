SELECT count(*) FROM herald.claim_batch('w', 100);
