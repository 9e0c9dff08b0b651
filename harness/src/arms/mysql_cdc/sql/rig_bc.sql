-- Rigs B and C (the seed's snapshot -> Kafka and CDC table): cart with ~150 B rows of RAND() values, every
-- column nullable; one explicit transaction per 10,000 rows. {db} is benchdb (rig B) or benchdb_cdc (rig C:
-- its own database, so truncating it before every CDC run never throws away rig B's load).
CREATE DATABASE IF NOT EXISTS {db} CHARACTER SET utf8mb4;
DROP TABLE IF EXISTS {db}.cart;
CREATE TABLE {db}.cart (
  id INT AUTO_INCREMENT PRIMARY KEY,
  user_id INT,
  product_id INT,
  quantity INT,
  price DECIMAL(10,2),
  status VARCHAR(20),
  notes MEDIUMTEXT,
  created_at DATETIME
);
DROP PROCEDURE IF EXISTS {db}.streamlab_insert_cart;
CREATE PROCEDURE {db}.streamlab_insert_cart(IN total INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE upto INT;
  WHILE i < total DO
    SET upto = LEAST(i + 10000, total);
    START TRANSACTION;
    WHILE i < upto DO
      INSERT INTO {db}.cart (user_id, product_id, quantity, price, status, notes, created_at)
      VALUES (FLOOR(1 + RAND() * 100000), FLOOR(1 + RAND() * 10000), FLOOR(1 + RAND() * 10),
              ROUND(1 + RAND() * 999, 2), ELT(FLOOR(1 + RAND() * 3), 'pending', 'confirmed', 'shipped'),
              REPEAT(CONCAT('note_', FLOOR(RAND() * 9999)), 10), NOW() - INTERVAL FLOOR(RAND() * 365) DAY);
      SET i = i + 1;
    END WHILE;
    COMMIT;
  END WHILE;
END;
