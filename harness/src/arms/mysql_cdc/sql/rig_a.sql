-- Rig A (the seed's snapshot -> drop table): testdb.cart with ~600 B rows; users and products exist and stay
-- empty (the seed's input listed all three tables). Row i: user (i%10000)+1, product (i%1000)+1,
-- quantity (i%10)+1, price (i%1000)+0.99, info = 40 x 'cart <i> '; one INSERT per row, a commit every 10,000.
CREATE DATABASE IF NOT EXISTS testdb CHARACTER SET utf8mb4;
DROP TABLE IF EXISTS testdb.cart, testdb.users, testdb.products;
CREATE TABLE testdb.users (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  email VARCHAR(255) NOT NULL,
  created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE testdb.products (
  id INT AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(200) NOT NULL,
  price DECIMAL(10,2) NOT NULL DEFAULT 0.00,
  stock INT NOT NULL DEFAULT 0
);
CREATE TABLE testdb.cart (
  id INT AUTO_INCREMENT PRIMARY KEY,
  user_id INT NOT NULL,
  product_id INT NOT NULL,
  quantity INT NOT NULL DEFAULT 1,
  price DECIMAL(10,2) NOT NULL DEFAULT 0.00,
  info TEXT NOT NULL
);
DROP PROCEDURE IF EXISTS testdb.streamlab_load_cart;
CREATE PROCEDURE testdb.streamlab_load_cart(IN total INT)
BEGIN
  DECLARE i INT DEFAULT 1;
  START TRANSACTION;
  WHILE i <= total DO
    INSERT INTO testdb.cart (user_id, product_id, quantity, price, info)
    VALUES ((i % 10000) + 1, (i % 1000) + 1, (i % 10) + 1, ROUND((i % 1000) + 0.99, 2),
            REPEAT(CONCAT('cart ', i, ' '), 40));
    IF i % 10000 = 0 THEN
      COMMIT;
      START TRANSACTION;
    END IF;
    SET i = i + 1;
  END WHILE;
  COMMIT;
END;
