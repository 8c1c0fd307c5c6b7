-- One step of the compose stack's write load (deploy/postgres/load.sh runs
-- it in a loop): a small transaction of new orders, status changes, a
-- cancellation and now and then a new customer or a balance change.
BEGIN;
INSERT INTO shop.orders (customer_id, amount, details)
SELECT c.id, (1 + random() * 200)::numeric(10,2),
       jsonb_build_object('items', 1 + floor(random() * 5)::int, 'channel', 'load')
FROM (SELECT id FROM shop.customers ORDER BY random() LIMIT 2) AS c;
UPDATE shop.orders SET status = CASE status WHEN 'pending' THEN 'paid' WHEN 'paid' THEN 'shipped' ELSE 'delivered' END
WHERE id IN (SELECT id FROM shop.orders WHERE status <> 'delivered' ORDER BY random() LIMIT 3);
DELETE FROM shop.orders
WHERE id = (SELECT id FROM shop.orders WHERE status = 'pending' ORDER BY random() LIMIT 1) AND random() < 0.3;
UPDATE shop.customers SET balance = balance + (random() * 20)::numeric(12,2)
WHERE id = (SELECT id FROM shop.customers ORDER BY random() LIMIT 1);
INSERT INTO shop.customers (name, email)
SELECT 'customer ' || x, 'customer' || x || '@example.com'
FROM (SELECT coalesce(max(id), 0) + 1 AS x FROM shop.customers) AS s
WHERE random() < 0.1;
COMMIT;
