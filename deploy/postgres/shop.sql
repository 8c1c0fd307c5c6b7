-- The sample shop of the compose stack and of `make demo` (which embeds
-- this file through package deploy): two tables with some rows and the
-- publication the bridge streams. The postgres image's entrypoint runs it
-- first (10-shop.sql), connected to POSTGRES_DB=shop as the superuser.

CREATE SCHEMA shop;
CREATE TABLE shop.customers (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    email      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    balance    numeric(12,2) NOT NULL DEFAULT 0
);
CREATE TABLE shop.orders (
    id          bigserial PRIMARY KEY,
    customer_id bigint NOT NULL REFERENCES shop.customers (id),
    amount      numeric(10,2) NOT NULL,
    status      text NOT NULL DEFAULT 'pending',
    placed_at   timestamptz NOT NULL DEFAULT now(),
    details     jsonb
);
INSERT INTO shop.customers (name, email, created_at, balance)
SELECT 'customer ' || i, 'customer' || i || '@example.com',
       now() - make_interval(days => i), (i * 17 % 500)::numeric(12,2)
FROM generate_series(1, 50) AS i;
INSERT INTO shop.orders (customer_id, amount, status, placed_at, details)
SELECT 1 + i % 50, (5 + i * 37 % 200 + 0.99)::numeric(10,2),
       (ARRAY['pending', 'paid', 'shipped', 'delivered'])[1 + i % 4],
       now() - make_interval(hours => i),
       jsonb_build_object('items', 1 + i % 5, 'channel', CASE WHEN i % 3 = 0 THEN 'app' ELSE 'web' END)
FROM generate_series(1, 200) AS i;

CREATE PUBLICATION shop_pub FOR TABLE shop.customers, shop.orders;
