SELECT herald.enqueue('sms', '+14155550100', '{"text":"Your code is 123456. It expires in 10 minutes; do not share it with anyone."}');
