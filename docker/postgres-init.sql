-- The Parity results store beside Airflow's metadata database (docker-compose.yaml).
CREATE USER parity WITH PASSWORD 'parity';
CREATE DATABASE parity OWNER parity;
