-- Database roles of a Raiz deployment, created once by a PostgreSQL superuser (psql -f).
-- docs/operations.md, "Database roles".  Replace the passwords (or use certificates).
--
--   raiz          owns the database and its schemas; migrations only (raiz-migrate.service,
--                 RAIZ_MIGRATION_DATABASE_URL in /etc/raiz/raiz-migrate.env)
--   raiz_service  NOLOGIN group: the grants of migrations game_0005, ledger_0003, rng_0002,
--                 compliance_0003 (compliance_0004: game.merkle_nodes; ledger_0004: UPDATE
--                 on four columns of ledger.accounts only; game_0008: UPDATE on the columns
--                 the code changes of the mutable game tables only) and their default
--                 privileges
--   raiz_app      the service's login (DATABASE_URL in /etc/raiz/raiz.env): a member of
--                 raiz_service, owns nothing, cannot drop, alter or truncate a table nor
--                 disable a trigger
--
-- An existing deployment that served as `raiz` keeps `raiz` as the owner: run this file
-- (CREATE ROLE raiz fails harmlessly if it exists), move its URL to raiz-migrate.env, and
-- point DATABASE_URL at raiz_app.

CREATE ROLE raiz LOGIN PASSWORD 'REPLACE_WITH_OWNER_PASSWORD';
CREATE ROLE raiz_service NOLOGIN;
CREATE ROLE raiz_app LOGIN PASSWORD 'REPLACE_WITH_SERVICE_PASSWORD' IN ROLE raiz_service;
-- With pgaudit or log_connections, raiz_app's sessions are the service's; raiz's are migrations.

CREATE DATABASE raiz OWNER raiz;
-- Nobody but the owner creates anything in the database; only Raiz's roles connect.
REVOKE ALL ON DATABASE raiz FROM PUBLIC;
GRANT CONNECT ON DATABASE raiz TO raiz, raiz_service;
\connect raiz
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
