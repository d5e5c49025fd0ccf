pub mod ray_head;
