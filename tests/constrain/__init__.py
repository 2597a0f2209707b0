"""JSON mode and its constraints (`app/constrain`)."""
